"""The commands' library side: the translate, score, serve and models commands, and what every command shares (`cli`,
`streams`); scripts/ holds only their entry points."""
