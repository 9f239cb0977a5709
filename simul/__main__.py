from simul.cli import main

main()
