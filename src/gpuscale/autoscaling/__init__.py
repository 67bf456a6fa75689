"""Layer 3: replica autoscaling (HPA autoscaling/v2, KEDA, planners) and the signals they read.

Belongs here: pure decision logic over `AutoscalerView`. Must not touch engines or nodes.
"""
