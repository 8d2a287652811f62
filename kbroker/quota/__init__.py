"""Client quotas (Kafka's producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate):
the durable store, the rate arithmetic and the managers that turn a client's traffic into throttle times."""
