"""Reports: terminal tables now; the HTML report with plots builds on the same run summaries.

Belongs here: turning results into text or pictures. Must not run simulations.
"""
