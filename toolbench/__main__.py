from toolbench._cli import main

main()
