// Operator console: confirmations before state-changing forms, and the
// accounts-per-minute chart (Chart.js, vendored). No inline scripts: the
// Content-Security-Policy allows only files from the console itself.
document.addEventListener("submit", function (ev) {
  var msg = ev.target.getAttribute("data-confirm");
  if (msg && !window.confirm(msg)) {
    ev.preventDefault();
  }
});

(function () {
  var canvas = document.getElementById("per-minute");
  if (!canvas || !window.Chart) {
    return;
  }
  var chart = new Chart(canvas, {
    type: "line",
    data: { labels: [], datasets: [] },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: "index", intersect: false },
      scales: { y: { beginAtZero: true, title: { display: true, text: "accounts / minute" } } },
      elements: { point: { radius: 0 } }
    }
  });
  function load() {
    fetch(canvas.getAttribute("data-url"), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) {
        if (!d) { return; }
        chart.data.labels = d.labels;
        chart.data.datasets = d.datasets.map(function (s) { return { label: s.label, data: s.data, tension: 0.2 }; });
        chart.update();
        canvas.setAttribute("data-loaded", "true");
      });
  }
  load();
  setInterval(load, 10000);
})();
