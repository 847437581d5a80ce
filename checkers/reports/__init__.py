"""Reports of a run: HTML, Markdown, JUnit XML and SARIF."""
