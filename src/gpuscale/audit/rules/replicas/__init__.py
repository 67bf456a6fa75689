"""Rules on replica autoscaling behaviour: floors, windows, P/D roles, competing scalers."""
