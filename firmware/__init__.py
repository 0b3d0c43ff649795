"""Driver model: talks to the hardware through a small platform interface only."""
