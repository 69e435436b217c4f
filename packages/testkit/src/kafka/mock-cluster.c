/*
 * A Kafka protocol peer for the Kafka tests: librdkafka's mock cluster, which speaks the broker
 * side of the protocol (produce, fetch, consumer groups, offsets) in-process.
 *
 *   mock-cluster [--brokers N] TOPIC:PARTITIONS...
 *
 * Creates the topics (the mock broker refuses CreateTopics, so they must exist before keyscope
 * starts), prints one line `bootstrap <host:port,...>` on stdout, and runs until stdin closes —
 * so the cluster dies with the test process that spawned it, even when that process is killed.
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  int brokers = 1;
  char error[512];

  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  /* The handle only hosts the mock cluster; it never connects anywhere itself. */
  if (rd_kafka_conf_set(conf, "log_level", "3", error, sizeof(error)) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "mock-cluster: %s\n", error);
    return 2;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof(error));
  if (rk == NULL) {
    fprintf(stderr, "mock-cluster: cannot create a librdkafka handle: %s\n", error);
    return 2;
  }

  int first_topic = 1;
  if (argc > 2 && strcmp(argv[1], "--brokers") == 0) {
    brokers = atoi(argv[2]);
    first_topic = 3;
    if (brokers < 1) {
      fprintf(stderr, "mock-cluster: --brokers must be a positive integer, received %s\n", argv[2]);
      return 2;
    }
  }

  rd_kafka_mock_cluster_t *cluster = rd_kafka_mock_cluster_new(rk, brokers);
  if (cluster == NULL) {
    fprintf(stderr, "mock-cluster: rd_kafka_mock_cluster_new failed\n");
    return 1;
  }

  for (int i = first_topic; i < argc; i++) {
    char *spec = argv[i];
    char *colon = strrchr(spec, ':');
    if (colon == NULL || colon == spec || colon[1] == '\0') {
      fprintf(stderr, "mock-cluster: expected TOPIC:PARTITIONS, received %s\n", spec);
      return 2;
    }
    *colon = '\0';
    int partitions = atoi(colon + 1);
    if (partitions < 1) {
      fprintf(stderr, "mock-cluster: partitions of %s must be a positive integer, received %s\n", spec,
              colon + 1);
      return 2;
    }
    rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(cluster, spec, partitions, 1);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      fprintf(stderr, "mock-cluster: cannot create topic %s: %s\n", spec, rd_kafka_err2str(err));
      return 1;
    }
  }

  printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(cluster));
  fflush(stdout);

  /* Blocks until the parent closes our stdin or dies; the content is ignored. */
  char buffer[256];
  while (read(STDIN_FILENO, buffer, sizeof(buffer)) > 0) {
  }

  rd_kafka_mock_cluster_destroy(cluster);
  rd_kafka_destroy(rk);
  return 0;
}
