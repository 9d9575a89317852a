"""NumPyro programs, one module per paper (installed as zoo.models; never imports zoo)."""
