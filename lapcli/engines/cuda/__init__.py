"""The CUDA engines: cuda (one cooperative launch), cuda-stepwise (a launch per step), cuda-sap (auction
then shortest paths) and cuda-batch (a stack in one launch). Each builds its work, launches through
lapcli.cuda, and decodes; none imports another (shared pieces are in common.py)."""
