"""Rules on what autoscalers measure: metric names, labels and PromQL shapes."""
