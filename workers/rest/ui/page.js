// Polls this worker's /ui/state every second and puts the parts it rendered in place.
(function () {
  "use strict";
  var updated = document.getElementById("updated");
  function poll() {
    fetch("/ui/state", { credentials: "same-origin", cache: "no-store" })
      .then(function (answer) {
        if (!answer.ok) { throw new Error("HTTP " + answer.status); }
        return answer.json();
      })
      .then(function (state) {
        Object.keys(state.fragments).forEach(function (id) {
          var part = document.getElementById(id);
          if (part) { part.innerHTML = state.fragments[id]; }
        });
        updated.textContent = "updated " + new Date().toLocaleTimeString();
      })
      .catch(function (error) { updated.textContent = "not updated: " + error.message; })
      .finally(function () { setTimeout(poll, 1000); });
  }
  poll();
})();
