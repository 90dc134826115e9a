"""Reports: the report of a run, and every way it is shown.

Owns the report model (``model``: one frozen ``ReportModel`` whose serialisation
is the JSON report), its builder (``report``, reading a run's history in
``passes`` and judging it in ``judge``), the finding a report opens with
(``finding``), ``explore``'s report, the checks of a saved JSON (``reportcheck``),
the library's typed views (``library``) and the regression diff (``diff``). Its
rooms are the renderings: ``text/`` (the terminal table, Markdown, JUnit, .hgrm,
the failed-assertion text, a repeat's spread, the diff table) and ``html/`` (the
page, its rows, charts, race timeline and sweep heatmaps; ``templates/``). Every rendering reads the model, and a
saved report is read back into the same model, so it shows exactly what the
run showed. Prints nothing and writes no file but what ``library.Report`` is
asked to; the CLI writes the rest.
"""
