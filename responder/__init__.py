"""The responder: a stage that turns repair actions into scheduler actions (drain, resume) through
adapters, dry-run by default, behind a circuit breaker. Like every stage it imports the contract
(gpuhealth/) and no other stage."""
