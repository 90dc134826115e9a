"""Text renderings of a report: the terminal table (``render``), Markdown, JUnit and .hgrm
for CI (``formats``), why a report failed (``explain``), a repeated run's spread
(``repeat_view``) and ``loadtest diff``'s table (``diff_view``). Each reads the report model.
"""
