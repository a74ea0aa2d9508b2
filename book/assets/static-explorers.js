// On the static site an ipywidgets explorer shows the state it was saved in: its controls need a
// Python kernel. So that no reader meets a dead control, each saved explorer is greyed out, its
// controls are disabled, and a note above it says where it runs live (the page's own Colab and
// Binder launch links, which Jupyter Book derives from the one `repository.url` setting).
(function () {
  var VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]';

  function launchLinks() {
    var links = [];
    document.querySelectorAll("a[href]").forEach(function (a) {
      var href = a.getAttribute("href");
      if (/colab\.research\.google\.com/.test(href) && !links.some(function (l) { return l[0] === "Colab"; })) {
        links.push(["Colab", href]);
      } else if (/mybinder\.org|binderhub/.test(href) && !links.some(function (l) { return l[0] === "Binder"; })) {
        links.push(["Binder", href]);
      }
    });
    return links;
  }

  function note(links) {
    var div = document.createElement("div");
    div.className = "grpo-static-note";
    div.setAttribute("role", "note");
    var text = "Saved view: these controls need a Python kernel and do nothing on this page. Live in ";
    div.appendChild(document.createTextNode(text));
    links.forEach(function (l, i) {
      var a = document.createElement("a");
      a.href = l[1];
      a.textContent = l[0];
      a.target = "_blank";
      a.rel = "noopener";
      div.appendChild(a);
      div.appendChild(document.createTextNode(i < links.length - 1 ? ", " : ", or "));
    });
    div.appendChild(document.createTextNode("your own Jupyter (run the page's cells)."));
    return div;
  }

  function disable(root) {
    root.querySelectorAll("input, button, select, textarea").forEach(function (el) {
      el.disabled = true;
      el.setAttribute("tabindex", "-1");
      el.setAttribute("aria-disabled", "true");
    });
  }

  function mark() {
    var links = launchLinks();
    document.querySelectorAll(VIEW).forEach(function (script) {
      var box = script.closest(".cell_output") || script.parentElement;
      if (!box || box.classList.contains("grpo-static-widget")) { return; }
      box.classList.add("grpo-static-widget");
      box.parentElement.insertBefore(note(links), box);
      disable(box);
      // the widget manager renders the views after this runs: disable what it adds
      new MutationObserver(function () { disable(box); }).observe(box, { childList: true, subtree: true });
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mark);
  } else {
    mark();
  }
})();
