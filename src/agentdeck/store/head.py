"""The schema's revision: the newest in migrations/versions (a test keeps the two in
step). Alone here so that ``peek`` can check it without loading SQLAlchemy."""

HEAD = "0016"
