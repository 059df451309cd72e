"""What runs inside the student's sandbox: the job, the probes and their contracts and draws, the rule
recorders, the zygote that forks each job and the jail it puts itself in. Nothing here imports the grader."""
