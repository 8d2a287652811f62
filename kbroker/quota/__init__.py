"""Client quotas (Kafka's producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate):
the durable store, the rate arithmetic and the managers that turn a client's traffic into throttle times.

A broker loads them at start when its data directory holds quotas, else at the first DescribeClientQuotas or
AlterClientQuotas (Broker.client_quotas): with none stored nothing is metered (start-up time)."""

FILE_NAME = "client-quotas.json"  # in the data directory
