from simul.launch import main

main()
