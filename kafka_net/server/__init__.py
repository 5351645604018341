"""The API layer: request handler threads, KafkaApis and one handler module per API."""
