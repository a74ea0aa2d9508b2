// ipywidgets' controls typeset their descriptions with the MathJax 2 call
// MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]); this site loads MathJax 3, which has no
// Hub, so every saved widget would throw "Cannot read properties of undefined (reading 'Queue')".
// Give whatever object becomes window.MathJax a Hub whose Queue typesets with MathJax 3.
(function () {
  function addHub(mj) {
    if (mj && typeof mj === "object" && !mj.Hub) {
      mj.Hub = {
        Queue: function () {
          for (var i = 0; i < arguments.length; i++) {
            var job = arguments[i];
            if (Array.isArray(job) && job[0] === "Typeset" && window.MathJax && window.MathJax.typesetPromise) {
              window.MathJax.typesetPromise(job[2] ? [job[2]] : undefined).catch(function () {});
            }
          }
        }
      };
    }
    return mj;
  }
  var current = addHub(window.MathJax);
  try {
    Object.defineProperty(window, "MathJax", {
      configurable: true,
      enumerable: true,
      get: function () { return current; },
      set: function (value) { current = addHub(value); }
    });
  } catch (e) {
    // Not configurable (should not happen): fall back to patching after load.
    window.addEventListener("load", function () { addHub(window.MathJax); });
  }
})();
