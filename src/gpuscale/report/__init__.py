"""Reports: terminal tables, the self-contained HTML report, chart export (SVG, PNG).

Belongs here: turning results (JSON summaries with optional series, sweep tables) into text or
pictures. Must not run simulations (the CLI runs them and hands the results over).
"""
