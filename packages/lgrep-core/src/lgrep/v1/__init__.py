"""Generated; run make proto."""
