"""What a call shows while it runs: progress bars, handed to the kernel's thread."""
