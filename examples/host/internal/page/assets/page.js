// Follows the Kubeflow dashboard's namespace selector when the page is
// shown in its iframe: the dashboard's library (dashboard_lib.bundle.js,
// loaded before this file) calls onNamespaceSelected with the namespace
// the user picked, and the page loads that namespace. Opened on its own,
// the library is missing and the page keeps its namespace picker.
(function () {
  "use strict";
  var cd = window.centraldashboard;
  if (!cd || !cd.CentralDashboardEventHandler) {
    return;
  }
  document.documentElement.classList.add("in-dashboard");
  cd.CentralDashboardEventHandler.init(function (cdeh) {
    cdeh.onNamespaceSelected = function (ns) {
      var url = new URL(window.location.href);
      if (!ns || url.searchParams.get("ns") === ns) {
        return;
      }
      url.searchParams.set("ns", ns);
      window.location.replace(url.toString());
    };
  });
})();
