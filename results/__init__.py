"""The row store: result rows, the runs and arms they belong to, the files they came from, and their statistics.

Apps write rows through results.records (ingest_records) and tables read them from results.models.
"""
