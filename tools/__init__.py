"""Project tools that are not part of the installed package (run from the repository root)."""
