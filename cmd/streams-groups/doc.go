// Command streams-groups lists, describes and deletes streams groups, and prints and compares
// topology IDs and epochs. Its options follow Kafka's kafka-streams-groups.sh where they apply.
package main
