"""Where a worker runs and how it is started: this machine, an SSH host, a Slurm cluster."""
