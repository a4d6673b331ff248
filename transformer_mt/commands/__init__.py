"""The commands' library side: the translate, score and serve commands, and what every command shares (`cli`,
`streams`); scripts/ holds only their entry points."""
