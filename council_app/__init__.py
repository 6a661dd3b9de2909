"""The council record (F41, F54), replayed from what was measured."""
