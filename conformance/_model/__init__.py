"""The suite's oracles: plain models of what a conforming subject does, one module per
clause group (see CONTRIBUTING.md, "Where a clause lives")."""
