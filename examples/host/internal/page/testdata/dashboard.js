// The stand-in dashboard's side of library.js's protocol: it tells the
// iframe the selected namespace when the iframe connects and whenever the
// selector changes, as the central dashboard does.
(function () {
  "use strict";
  var frame = document.getElementById("app");
  var sel = document.getElementById("selector");
  var names = new URLSearchParams(location.search).get("namespaces").split(",");
  names.forEach(function (n) {
    var o = document.createElement("option");
    o.value = n;
    o.textContent = n;
    sel.appendChild(o);
  });
  function send() {
    frame.contentWindow.postMessage({type: "namespace-selected", value: sel.value}, location.origin);
  }
  window.addEventListener("message", function (e) {
    if (e.origin === location.origin && e.data && e.data.type === "iframe-connected") {
      send();
    }
  });
  sel.addEventListener("change", send);
})();
