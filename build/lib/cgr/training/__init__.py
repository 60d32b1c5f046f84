"""Lightning training: the DataModule (records -> pools) and the reader LightningModule."""
