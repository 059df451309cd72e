"""Author QA: `labs check` (the self-check of every lab) and mutation testing, with the ledgers they commit."""
