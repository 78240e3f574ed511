"""The CLI sub-commands of the reports room: `report`, `summary`, `cluster`, `view`, `tensorboard`."""
