"""The Kafka wire format: request/response framing and schema-driven encoding."""
