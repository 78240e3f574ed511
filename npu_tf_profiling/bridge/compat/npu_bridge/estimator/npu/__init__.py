"""`npu_bridge.estimator.npu`: npu_config, npu_estimator, npu_optimizer, loss scaling, util, scopes, hooks..."""
