"""Reports of a simulated or archived history: report tables, plots and the HTML page."""
