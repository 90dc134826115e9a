"""Reports: the JSON document of a run, and every way it is shown.

Owns the report model (``report``: the JSON report's contract, built from an
engine result), its checks (``reportcheck``), the terminal table
(``render``), the HTML page (``html`` and ``templates/``), Markdown, JUnit
and .hgrm (``formats``) and the regression diff (``diff``). Renders from the
JSON dict, so a saved report shows exactly what the run showed. Prints
nothing and writes no file: the CLI and ``loadtest.api.Report`` do.
"""
