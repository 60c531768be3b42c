"""What every layer shares: the configuration, the worker protocol, model specs, environment variables."""
