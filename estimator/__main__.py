from estimator.cli.main import main

main()
