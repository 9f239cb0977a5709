"""What the viewer sees at each step, given the outputs so far (display policies)."""
