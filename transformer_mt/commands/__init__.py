"""The commands' library side: the translate, score, serve and models commands, and what every command shares (`cli`,
`streams`, `environment`: flags read from TRANSFORMER_MT_<FLAG> variables); scripts/ holds only their entry points."""
