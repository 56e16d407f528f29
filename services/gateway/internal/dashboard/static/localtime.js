// Shows every <time datetime="..."> of the page in the viewer's own time
// zone, the server's UTC text kept as the element's title (on hover).
// Rows the live tail swaps in are converted too.
(function () {
  "use strict";
  var format = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit",
    hourCycle: "h23", timeZoneName: "short"
  });
  function localize(root) {
    var times = root.querySelectorAll("time[datetime]:not([data-local])");
    for (var i = 0; i < times.length; i++) {
      var t = times[i];
      var d = new Date(t.getAttribute("datetime"));
      if (isNaN(d.getTime())) {
        continue;
      }
      t.title = t.textContent + " (UTC)";
      t.textContent = format.format(d);
      t.setAttribute("data-local", "");
    }
  }
  document.addEventListener("DOMContentLoaded", function () { localize(document); });
  document.addEventListener("htmx:afterSwap", function (e) { localize(e.target); });
})();
