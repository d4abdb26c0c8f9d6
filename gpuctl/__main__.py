"""``python -m gpuctl`` is ``gpuctl``."""

from gpuctl import main

main()
