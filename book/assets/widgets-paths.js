// Tell require.js where the ipywidgets HTML manager lives on this site, so the manager's fonts and
// chunks load from _static/vendor/html-manager (it would otherwise ask the site root, or a CDN).
(function () {
  var here = document.currentScript && document.currentScript.src;
  if (!here || typeof window.require === "undefined") { return; }
  var base = here.replace(/widgets-paths\.js(\?.*)?$/, "vendor/html-manager");
  // Bundled modules (controls, base, ...) take their public path from their module id too.
  window.require.config({ paths: { "@jupyter-widgets/html-manager/dist": base, "@jupyter-widgets": base } });
})();
