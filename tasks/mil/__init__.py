"""Vision tasks: MAMMOTH (mixture of low-rank mini-experts in front of MIL aggregators)."""
