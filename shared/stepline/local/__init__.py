"""Running Stepline on one machine: the real state machine on moto's interpreter, handlers in process."""
