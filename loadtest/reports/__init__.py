"""Reports: the report of a run, and every way it is shown.

Owns the report model (``model``: one frozen ``ReportModel`` whose serialisation
is the JSON report), its builder (``report``, reading a run's history in
``passes`` and judging it in ``judge``), the checks of a saved JSON
(``reportcheck``), the library's typed views (``library``), the terminal table
(``render``, ``repeat_view``, ``heatmap``), the HTML page (``html``,
``charts``, ``timeline`` and ``templates/``), Markdown, JUnit and .hgrm
(``formats``), the failed-assertion text (``explain``) and the regression diff
(``diff``, shown by ``diff_view``). Every rendering reads the model, and a
saved report is read back into the same model, so it shows exactly what the
run showed. Prints nothing and writes no file but what ``library.Report`` is
asked to; the CLI writes the rest.
"""
