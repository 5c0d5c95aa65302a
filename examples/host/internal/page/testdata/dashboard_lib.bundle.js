// A stand-in for the central dashboard's library.js: the iframe's side of
// the protocol. init hands the app a handler whose onNamespaceSelected is
// called with each namespace the dashboard selects, and tells the
// dashboard the iframe is connected.
window.centraldashboard = {
  CentralDashboardEventHandler: {
    init: function (callback) {
      var handler = {};
      callback(handler);
      window.addEventListener("message", function (e) {
        if (e.origin !== location.origin || !e.data) {
          return;
        }
        if (e.data.type === "namespace-selected" && handler.onNamespaceSelected) {
          handler.onNamespaceSelected(e.data.value);
        }
      });
      if (window.parent !== window) {
        window.parent.postMessage({type: "iframe-connected"}, location.origin);
      }
    }
  }
};
