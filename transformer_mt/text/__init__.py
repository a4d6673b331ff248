"""Pure text transforms and per-language rules: they import nothing above them (../shared/DESIGN.md, layers)."""
