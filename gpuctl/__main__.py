"""``python -m gpuctl`` is ``gpuctl``."""

from gpuctl.main import main

main()
