"""The HTML report: the page (``page``), its summary rows and latency plots (``rows``), and
the drawings it embeds as inline SVG (``charts``, the race ``timeline``, sweep ``heatmap``).
Reads the report model; the Jinja template is ``loadtest/reports/templates/report.html.j2``.
"""
